/**
 * An e-mail address as a person types it into a form, checked and normalised (pure): trimmed, lower-cased, its
 * domain in ASCII (`почта.рф` becomes `xn--80a1acny.xn--p1ai`), so that one mailbox typed two ways is one address.
 * Lower-casing the local part is what every mail provider people use does anyway; a provider that told
 * `Ivan@` from `ivan@` is not worth a second subscription of the same person.
 *
 * Only the common form is taken (RFC 5321's dot-atom, no quoted local part, no IP literal, a dotted domain):
 * what university and public mailboxes look like, and what every relay accepts without SMTPUTF8.
 */
import { domainToASCII } from 'node:url';

/** Why a typed address is not taken. */
export type MailAddressProblem = 'empty' | 'too-long' | 'malformed' | 'non-ascii-local';

/** The longest address SMTP carries (RFC 5321 §4.5.3.1.3: a path of 256 octets, less the brackets). */
export const MAX_ADDRESS_LENGTH = 254;
const MAX_LOCAL_LENGTH = 64;
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The normalised address of `text`, or why it is not one. */
export function parseMailAddress(text: string): { address: string } | { problem: MailAddressProblem } {
  const typed = text.trim();
  if (typed === '') return { problem: 'empty' };
  if (typed.length > MAX_ADDRESS_LENGTH) return { problem: 'too-long' };
  const at = typed.lastIndexOf('@');
  if (at <= 0 || at === typed.length - 1) return { problem: 'malformed' };
  const local = typed.slice(0, at).toLowerCase();
  if (/[^\u0020-\u007e]/.test(local)) return { problem: 'non-ascii-local' };
  if (local.length > MAX_LOCAL_LENGTH || !LOCAL.test(local)) return { problem: 'malformed' };
  const domain = domainToASCII(typed.slice(at + 1).toLowerCase());
  const labels = domain.split('.');
  const tld = labels.at(-1) ?? '';
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label)) || /^\d+$/.test(tld))
    return { problem: 'malformed' };
  const address = `${local}@${domain}`;
  return address.length > MAX_ADDRESS_LENGTH ? { problem: 'too-long' } : { address };
}

/** The domain of a normalised address (or of `Name <address>`): what names our mails' `Message-ID`s. */
export function mailDomain(address: string): string {
  const bare = /<([^<>]+)>\s*$/.exec(address)?.[1] ?? address;
  return bare
    .slice(bare.lastIndexOf('@') + 1)
    .trim()
    .toLowerCase();
}
