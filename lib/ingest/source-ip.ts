// The optional source-IP allow-list (ALLOWED_SOURCE_CIDRS): receivers behind an IP restriction accept only
// the platform's sender addresses. Matching is Node's own net.BlockList (IPv4 and IPv6 subnets, IPv4-mapped
// IPv6 addresses matched against IPv4 ranges): nothing added to the ingest bundle, nothing to load.
import { BlockList, isIP } from 'node:net';

export interface SourceAllowList {
  /** The ranges as configured, normalised to `address/prefix`, for logs and banners. */
  readonly ranges: readonly string[];
  allows(sourceIp: string | undefined): boolean;
}

/** Thrown for a malformed ALLOWED_SOURCE_CIDRS: its message is one sentence naming the bad entry. */
export class AllowListError extends Error {
  override name = 'AllowListError';
}

const EXAMPLE = 'such as 203.0.113.0/24 or 2001:db8::/32';

/** `a.b.c.d/n` or `x:y::/n`; a bare address is a single host (/32 or /128). Throws AllowListError. */
export function parseCidr(
  text: string,
  source = 'ALLOWED_SOURCE_CIDRS',
): { address: string; prefix: number; family: 4 | 6 } {
  const entry = text.trim();
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family !== 4 && family !== 6) {
    throw new AllowListError(`${source}: ${JSON.stringify(entry)} is not an IPv4 or IPv6 range (${EXAMPLE}).`);
  }
  const max = family === 4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const bits = entry.slice(slash + 1);
    prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
    if (!(prefix >= 0 && prefix <= max)) {
      throw new AllowListError(
        `${source}: ${JSON.stringify(entry)} has a prefix length outside 0 to ${max} (${EXAMPLE}).`,
      );
    }
  }
  return { address, prefix, family };
}

/**
 * The allow-list from a comma-separated list of ranges, or null when the text is empty or unset (no check).
 * Throws AllowListError on the first malformed entry: a security setting is never silently dropped.
 */
export function parseAllowList(text: string | undefined, source = 'ALLOWED_SOURCE_CIDRS'): SourceAllowList | null {
  const entries = (text ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return null;
  const list = new BlockList();
  const ranges: string[] = [];
  for (const entry of entries) {
    const { address, prefix, family } = parseCidr(entry, source);
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
    ranges.push(`${address}/${prefix}`);
  }
  return {
    ranges,
    allows(sourceIp) {
      const ip = sourceIp?.trim() ?? '';
      const family = isIP(ip);
      // An absent or unreadable source address is outside every range: the list fails closed.
      if (family === 0) return false;
      return list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}
