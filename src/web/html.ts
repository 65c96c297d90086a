/**
 * HTML for the pages, written as tagged templates with ghtml: every `${value}` is escaped. A `!${…}` inserts
 * its value raw and is only for HTML that these helpers made themselves (an `html` result, or an array of
 * them), never for text from outside.
 */
import { html } from 'ghtml';

export { html };

/** HTML made by `html` (a string, named so that signatures say which strings are markup). */
export type Html = string;
