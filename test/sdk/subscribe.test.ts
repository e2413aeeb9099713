// The SDK's subscribe(): a config change reaches the application without polling feature().
import { describe, expect, it } from 'vitest';
import { createClient, type Config } from 'experimentation-api/sdk';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

describe.each(engines)('the SDK subscribe() on %s', (engine) => {
  const server = useServer(engine);

  it('when a flag flips, then a listener hears the new config and feature() serves the new value; an unsubscribed one hears nothing more', async () => {
    // Arrange
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'dark_mode', type: 'boolean', enabled: true, value: 'false' } });
    const client = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    try {
      await client.ready();
      const heard: boolean[] = [];
      const leftEarly: Config[] = [];
      let flipped: () => void = () => undefined;
      const seen = new Promise<void>((resolve) => (flipped = resolve));
      client.subscribe(() => {
        heard.push(client.feature<boolean>('dark_mode', 'u1')!);
        if (heard.at(-1) === true) flipped();
      });
      const unsubscribe = client.subscribe((config) => leftEarly.push(config));
      unsubscribe();
      expect(client.feature<boolean>('dark_mode', 'u1')).toBe(false);

      // Act
      await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'dark_mode' } }, body: { value: 'true' } });
      await seen;

      // Assert
      expect(heard.at(-1)).toBe(true);
      expect(client.feature<boolean>('dark_mode', 'u1')).toBe(true);
      expect(leftEarly).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
