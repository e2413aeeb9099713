import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSecret, signedHeaders } from '../../server/webhooks/signature';

describe('webhook signatures', () => {
  it("when the Standard Webhooks spec's published example is signed, then the signature is the published one", () => {
    const headers = signedHeaders(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('when a delivery is signed with a new secret, then the standardwebhooks package verifies it, and refuses a changed body or another secret', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ id: '7', resource_type: 'flag', resource_key: 'new_checkout', action: 'updated', before: { enabled: false }, after: { enabled: true } });
    const headers = signedHeaders([secret], 'msg_7', Math.floor(Date.now() / 1000), body);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('true', 'false'), { ...headers })).toThrow();
    expect(() => new Webhook(newSecret()).verify(body, { ...headers })).toThrow();
  });

  it('when a delivery is signed with a new and a previous secret, then the header holds both signatures, and standardwebhooks verifies it with either, and with no third', () => {
    const [next, previous] = [newSecret(), newSecret()];
    const body = '{"id":"8"}';
    const headers = signedHeaders([next, previous], 'msg_8', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    expect(headers['webhook-signature'].split(' ')[0]).toBe(signedHeaders([next], 'msg_8', Number(headers['webhook-timestamp']), body)['webhook-signature']);
    for (const secret of [next, previous]) expect(new Webhook(secret).verify(body, { ...headers })).toEqual({ id: '8' });
    expect(() => new Webhook(newSecret()).verify(body, { ...headers })).toThrow();
  });
});
