import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type SecurityRequirement = Record<string, string[]>;

interface Parameter {
  name: string;
  in: string;
  schema?: { type?: string | string[]; minimum?: number; maximum?: number; minItems?: number };
}
type ParameterOrRef = Parameter | { $ref: string };

/** The parts of the bundled OpenAPI document the server reads itself. */
export interface ContractDocument {
  security?: SecurityRequirement[];
  paths: Record<string, Partial<Record<string, { operationId?: string; 'x-role'?: string; 'x-ofrep'?: string; security?: SecurityRequirement[]; requestBody?: object; parameters?: ParameterOrRef[] }>>>;
  components?: { parameters?: Record<string, Parameter> };
}

/** An operation's parameter, its `$ref` (to `#/components/parameters/…`) followed. */
export function parameterOf(document: ContractDocument, parameter: ParameterOrRef): Parameter {
  if (!('$ref' in parameter)) return parameter;
  const found = document.components?.parameters?.[parameter.$ref.replace('#/components/parameters/', '')];
  if (!found) throw new Error(`unresolvable parameter ${parameter.$ref}`);
  return found;
}

export const contractPath = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

export function loadContract(): ContractDocument {
  return JSON.parse(readFileSync(contractPath, 'utf8')) as ContractDocument;
}
