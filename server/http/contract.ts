import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type SecurityRequirement = Record<string, string[]>;

/** The parts of the bundled OpenAPI document the server reads itself. */
export interface ContractDocument {
  security?: SecurityRequirement[];
  paths: Record<string, Partial<Record<string, { operationId?: string; security?: SecurityRequirement[]; requestBody?: object }>>>;
}

export const contractPath = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

export function loadContract(): ContractDocument {
  return JSON.parse(readFileSync(contractPath, 'utf8')) as ContractDocument;
}
