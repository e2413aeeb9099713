import type { components } from '../generated/api';

/** What a member may do in a team: viewer < editor < admin (the contract's MemberRole). */
export type MemberRole = components['schemas']['MemberRole'];

export const MEMBER_ROLES: readonly MemberRole[] = ['viewer', 'editor', 'admin'];

export function isMemberRole(value: unknown): value is MemberRole {
  return MEMBER_ROLES.includes(value as MemberRole);
}

/** The role a token acts with in a team: a read-only token acts as a viewer whatever its user's role. */
export function actingRole(role: MemberRole, readOnly: boolean): MemberRole {
  return readOnly ? 'viewer' : role;
}

export function reaches(role: MemberRole, needed: MemberRole): boolean {
  return MEMBER_ROLES.indexOf(role) >= MEMBER_ROLES.indexOf(needed);
}
