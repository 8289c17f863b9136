// The optional source-IP allow-list (ALLOWED_SOURCE_CIDRS): receivers behind an IP restriction accept only
// the platform's sender addresses. Matching is Node's own net.BlockList: nothing added to the ingest bundle,
// nothing to load. The two families are kept apart: an IPv4 source (or its IPv4-mapped IPv6 form,
// ::ffff:a.b.c.d) is matched against the IPv4 ranges only, where an IPv4-mapped range (::ffff:a.b.c.d/n,
// n >= 96) counts as the IPv4 range it maps; any other IPv6 source against the other IPv6 ranges only. So
// `::/0` admits every IPv6 address and no IPv4 one (BlockList alone would let it admit both).
import { BlockList, isIP } from 'node:net';

export interface SourceAllowList {
  /** The ranges as configured, normalised to `address/prefix`, for logs and banners. */
  readonly ranges: readonly string[];
  /** Sentences for the start-up log: IPv6 ranges that span the IPv4-mapped addresses yet admit no IPv4 source. */
  readonly warnings: readonly string[];
  allows(sourceIp: string | undefined): boolean;
}

/** Thrown for a malformed ALLOWED_SOURCE_CIDRS: its message is one sentence naming the bad entry. */
export class AllowListError extends Error {
  override name = 'AllowListError';
}

const EXAMPLE = 'such as 203.0.113.0/24 or 2001:db8::/32';

/** `a.b.c.d/n` or `x:y::/n`; a bare address is a single host (/32 or /128). Throws AllowListError. */
function parseCidr(text: string, source = 'ALLOWED_SOURCE_CIDRS'): { address: string; prefix: number; family: 4 | 6 } {
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

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, in any notation) stands for, else null. */
function mappedIpv4(ipv6: string): string | null {
  let host: string;
  try {
    // The WHATWG serialisation writes every mapped address as ::ffff:<hex>:<hex>.
    host = new URL(`http://[${ipv6}]/`).hostname;
  } catch {
    return null;
  }
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(host);
  if (!m) return null;
  const hi = Number.parseInt(m[1]!, 16);
  const lo = Number.parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IPv6 range holds the whole IPv4-mapped block ::ffff:0:0/96. */
function spansMappedBlock(address: string, prefix: number): boolean {
  const range = new BlockList();
  range.addSubnet(address, prefix, 'ipv6');
  return prefix <= 96 && range.check('::ffff:0:0', 'ipv6');
}

/**
 * The allow-list from a comma-separated list of ranges, or null when the variable is unset (no check).
 * Throws AllowListError when it is set yet names no range (empty, or separators only: a list meant to restrict
 * must not open the endpoint to every address), and on the first malformed entry: a security setting is never
 * silently dropped.
 */
export function parseAllowList(text: string | undefined, source = 'ALLOWED_SOURCE_CIDRS'): SourceAllowList | null {
  if (text === undefined) return null;
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) {
    throw new AllowListError(
      `${source} is set but names no range (${JSON.stringify(text)}): give ranges ${EXAMPLE}, or leave it unset ` +
        'to accept every address.',
    );
  }
  const ipv4 = new BlockList();
  const ipv6 = new BlockList();
  const ranges: string[] = [];
  const warnings: string[] = [];
  for (const entry of entries) {
    const { address, prefix, family } = parseCidr(entry, source);
    ranges.push(`${address}/${prefix}`);
    const mapped = family === 6 && prefix >= 96 ? mappedIpv4(address) : null;
    if (family === 4) ipv4.addSubnet(address, prefix, 'ipv4');
    else if (mapped !== null) ipv4.addSubnet(mapped, prefix - 96, 'ipv4');
    else {
      ipv6.addSubnet(address, prefix, 'ipv6');
      if (spansMappedBlock(address, prefix)) {
        warnings.push(
          `${source}: ${JSON.stringify(entry)} admits IPv6 sources only; IPv4 sources need an IPv4 range ` +
            '(0.0.0.0/0 for all of them).',
        );
      }
    }
  }
  return {
    ranges,
    warnings,
    allows(sourceIp) {
      const ip = sourceIp?.trim() ?? '';
      const family = isIP(ip);
      // An absent or unreadable source address is outside every range: the list fails closed.
      if (family === 0) return false;
      if (family === 4) return ipv4.check(ip, 'ipv4');
      const mapped = mappedIpv4(ip);
      return mapped !== null ? ipv4.check(mapped, 'ipv4') : ipv6.check(ip, 'ipv6');
    },
  };
}
