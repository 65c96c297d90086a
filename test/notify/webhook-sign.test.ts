import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signature, signedHeaders } from '../../src/notify/webhooks/sign.ts';

// The test vector of the specification's reference libraries (libraries/javascript/src/webhook.test.ts).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('webhook signatures (Standard Webhooks v1)', () => {
  it("reproduces the specification's test vector", () => {
    expect(signature(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.payload)).toBe(VECTOR.signature);
    // The reference library agrees with the vector, so the two cannot both be wrong the same way.
    expect(new Webhook(VECTOR.secret).sign(VECTOR.id, new Date(VECTOR.timestamp * 1000), VECTOR.payload)).toBe(
      VECTOR.signature,
    );
  });

  it("signs what the reference library's verify accepts, and nothing altered", () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ type: 'timetable.changed', data: { name: 'ИВТ-21 <&>', changes: [] } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secret, 'msg_abc', now, body);
    expect(headers['content-type']).toBe('application/json');
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_abd' })).toThrow();
    expect(() => new Webhook(secret).verify(body, signedHeaders(secret, 'msg_abc', now - 600, body))).toThrow();
  });
});
