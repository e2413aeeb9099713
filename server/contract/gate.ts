import type { Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Identify } from '../auth/identify';
import { authenticate } from './authenticate';
import { contractPath, type ContractDocument } from './document';
import { bareContentType, jsonBodies, pageDepthGuard, plainQueryOnly, sixDecimals, wellFormedText } from './request-guards';
import { knownOperations } from './routing';

export interface GateOptions {
  validateRequests: boolean;
  validateResponses: boolean;
}

type ValidatorOptions = Parameters<typeof OpenApiValidator.middleware>[0];

/**
 * express-openapi-validator as the server sets it up. Security is ours (authenticate, above), so
 * the validator's is off; formats are validated in full and `$ref`s bundled, the library's
 * defaults — the bench's libraries phase measures the alternatives (`validateFormats: 'fast'` or
 * off, `$refParser: dereference`) against this setting.
 */
export function validatorOptions({ validateRequests, validateResponses }: GateOptions): ValidatorOptions {
  return {
    apiSpec: contractPath,
    validateRequests: validateRequests && { allowUnknownQueryParameters: false },
    validateResponses: validateResponses && { removeAdditional: false },
    validateSecurity: false,
    validateFormats: true,
    ignorePaths: (path: string) => !path.startsWith('/api/'),
  };
}

/**
 * What a request to the API passes before any route — the contract's routing (404/405),
 * authentication (401/403), the body guards (400/413/415), the validator (400), the checks
 * that every string of the body is well-formed and numbers have at most six decimals (400) and the depth bound of pages (400) — the same for
 * the server and the mock, so that both refuse exactly the same requests.
 */
export function useContractGate(app: Express, contract: ContractDocument, identify: Identify, { validateRequests, validateResponses }: GateOptions): void {
  app.use(knownOperations(contract));
  app.use('/api', authenticate(identify));
  app.use(plainQueryOnly, bareContentType, ...jsonBodies());
  app.use(OpenApiValidator.middleware(validatorOptions({ validateRequests, validateResponses })));
  // After the validator: its 400s for the shape come first, and a body it let through is shallow.
  app.use('/api', wellFormedText, sixDecimals);
  app.use('/api', pageDepthGuard);
}
