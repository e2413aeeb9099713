// Bare Express 5 answering the config and ingest operations with constant bodies, plus the
// layers named in LIBRARIES (comma-separated: request-log, rate-limit, validator), each set up
// as the real server sets it up: what the request path's fixed layers cost per request, apart
// from storage and the operations' own code. `validator-<variant>` is the validator with one of
// its options changed (VALIDATOR_VARIANTS), to measure what that option costs.
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { pino } from 'pino';
import { validatorOptions } from '../../server/contract/gate';
import { rateLimiter } from '../../server/rate-limit/rate-limiter';
import { requestLog } from '../../server/http/request-log';

const libraries = new Set((process.env.LIBRARIES ?? '').split(',').filter(Boolean));
const VALIDATOR_VARIANTS = {
  validator: {},
  'validator-formats-fast': { validateFormats: 'fast' },
  'validator-no-formats': { validateFormats: false },
  'validator-dereference': { $refParser: { mode: 'dereference' } },
} as const;
const at = '2026-11-22T09:00:00.000Z';
const variants = (keys: string[], shares: number[]) => keys.map((key, i) => ({ key, control: i === 0, traffic: shares[i] }));
const CONFIG = {
  data: {
    team: 1,
    experiments: [
      { key: 'checkout_button', seed: '7141638c41f04e1724d301374c300383', event: 'purchase', variants: variants(['control', 'treatment'], [50, 50]) },
      { key: 'pricing_page', seed: '27b7a66d464ca64ea6dce67c349abf27', event: 'purchase', variants: variants(['control', 'discount', 'bundle'], [34, 33, 33]) },
      { key: 'onboarding', seed: 'bee22aa222796b843c47e0dd8e462367', event: 'signup', variants: variants(['control', 'guided'], [80, 20]) },
    ],
    features: [
      { key: 'dark_mode', enabled: false, value: null },
      { key: 'new_header', enabled: true, value: null },
    ],
  },
};
const assignment = (experiment: string, variant: string) => ({ experiment, status: 'running', variant, enrolled_at: at });

const app = express();
app.set('query parser', 'simple');
if (libraries.has('request-log')) app.use(requestLog(pino({ level: 'info' })));
if (libraries.has('rate-limit')) app.use(rateLimiter({ enabled: true, windowSeconds: 60, perCredential: 1e9, perAddress: 1e9 }));
app.use(express.json());
for (const [name, variant] of Object.entries(VALIDATOR_VARIANTS)) {
  if (libraries.has(name)) app.use(OpenApiValidator.middleware({ ...validatorOptions({ validateRequests: true, validateResponses: false }), ...variant }));
}
app.get('/api/teams/:team/config', (_req, res) => {
  res.json(CONFIG);
});
app.post('/api/teams/:team/ingest', (req, res) => {
  const participant = { key: (req.body as { participant: string }).participant, notes: null, attributes: {}, created_at: at, updated_at: at };
  res.json({ data: { participant, assignments: [assignment('checkout_button', 'control'), assignment('pricing_page', 'discount'), assignment('onboarding', 'control')] } });
});
app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
