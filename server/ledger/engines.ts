import type { Engine } from '../storage/engine';
import type { Ledger } from './port';
import { postgresLedger } from './postgres';
import { sqliteLedger } from './sqlite';

/** The participants' write model of an engine. */
export const ledgerOf = (engine: Engine): Ledger => (engine === 'postgres' ? postgresLedger : sqliteLedger);
