import { AllowListError, parseAllowList } from './source-ip.ts';

const list = (text: string) => {
  const parsed = parseAllowList(text);
  if (!parsed) throw new Error('expected a list');
  return parsed;
};

describe('parseAllowList', () => {
  test('unset: no list, so no check', () => {
    expect(parseAllowList(undefined)).toBeNull();
  });

  test.each(['', ' ', ',', ' , ,'])(
    'set to %p, empty or separators only: refused with one sentence, not taken for every address',
    (text) => {
      expect(() => parseAllowList(text)).toThrow(AllowListError);
      expect(() => parseAllowList(text)).toThrow(
        `ALLOWED_SOURCE_CIDRS is set but names no range (${JSON.stringify(text)}): give ranges such as ` +
          '203.0.113.0/24 or 2001:db8::/32, or leave it unset to accept every address.',
      );
    },
  );

  test('IPv4 range edges: the first and last address are inside, their neighbours outside', () => {
    const allow = list('198.51.100.0/24');
    expect(allow.allows('198.51.100.0')).toBe(true);
    expect(allow.allows('198.51.100.255')).toBe(true);
    expect(allow.allows('198.51.99.255')).toBe(false);
    expect(allow.allows('198.51.101.0')).toBe(false);
  });

  test('an odd prefix splits inside an octet', () => {
    const allow = list('10.1.2.64/27'); // .64 to .95
    expect(['10.1.2.63', '10.1.2.64', '10.1.2.95', '10.1.2.96'].map((ip) => allow.allows(ip))).toEqual([
      false,
      true,
      true,
      false,
    ]);
  });

  test('IPv6 range edges', () => {
    const allow = list('2001:db8:abcd::/48');
    expect(allow.allows('2001:db8:abcd::')).toBe(true);
    expect(allow.allows('2001:db8:abcd:ffff:ffff:ffff:ffff:ffff')).toBe(true);
    expect(allow.allows('2001:db8:abcc:ffff:ffff:ffff:ffff:ffff')).toBe(false);
    expect(allow.allows('2001:db8:abce::')).toBe(false);
  });

  test('an IPv4-mapped IPv6 address is matched against the IPv4 ranges, in both notations', () => {
    const allow = list('203.0.113.0/24');
    expect(allow.allows('::ffff:203.0.113.7')).toBe(true);
    expect(allow.allows('::ffff:cb00:7107')).toBe(true); // 203.0.113.7 in hex
    expect(allow.allows('::ffff:203.0.114.7')).toBe(false);
    // Not a mapped address: an IPv6 address whose last 32 bits merely look like the range.
    expect(allow.allows('2001:db8::cb00:7107')).toBe(false);
  });

  test('an IPv4-mapped range accepts the plain IPv4 address too', () => {
    const allow = list('::ffff:192.0.2.0/120');
    expect(allow.allows('192.0.2.200')).toBe(true);
    expect(allow.allows('192.0.3.1')).toBe(false);
  });

  test('mixed families, spaces and single hosts (a bare address, /32 and /128)', () => {
    const allow = list(' 192.0.2.10 , 2001:db8::1/128,198.51.100.7/32 ');
    expect(allow.ranges).toEqual(['192.0.2.10/32', '2001:db8::1/128', '198.51.100.7/32']);
    expect(allow.allows('192.0.2.10')).toBe(true);
    expect(allow.allows('192.0.2.11')).toBe(false);
    expect(allow.allows('2001:db8::1')).toBe(true);
    expect(allow.allows('2001:db8::2')).toBe(false);
    expect(allow.allows('198.51.100.7')).toBe(true);
  });

  test('0.0.0.0/0 admits every IPv4 address and no IPv6 one; ::/0 every IPv6 one', () => {
    expect(list('0.0.0.0/0').allows('255.255.255.255')).toBe(true);
    expect(list('0.0.0.0/0').allows('::ffff:198.51.100.1')).toBe(true);
    expect(list('0.0.0.0/0').allows('2001:db8::1')).toBe(false);
    expect(list('::/0').allows('2001:db8::1')).toBe(true);
  });

  test('::/0 (or any IPv6 range spanning ::ffff:0:0/96) admits no IPv4 address in either notation, and says so', () => {
    for (const ranges of ['::/0', '::/64', '::ffff:0:0/80']) {
      const allow = list(ranges);
      expect([
        allow.allows('198.51.100.1'),
        allow.allows('::ffff:198.51.100.1'),
        allow.allows('::ffff:c633:6401'),
      ]).toEqual([false, false, false]);
      expect(allow.warnings).toEqual([
        `ALLOWED_SOURCE_CIDRS: ${JSON.stringify(ranges)} admits IPv6 sources only; IPv4 sources need an IPv4 range ` +
          '(0.0.0.0/0 for all of them).',
      ]);
    }
    expect(list('::/0').allows('::1')).toBe(true);
    // Both families, each by its own range.
    const both = list('::/0,0.0.0.0/0');
    expect([both.allows('198.51.100.1'), both.allows('2001:db8::1')]).toEqual([true, true]);
    // A range that does not span the mapped block says nothing.
    expect(list('2001:db8::/32,192.0.2.0/24').warnings).toEqual([]);
  });

  test('::ffff:0:0/96 is every IPv4 address, written as a mapped range', () => {
    const allow = list('::ffff:0:0/96');
    expect([allow.allows('198.51.100.1'), allow.allows('::ffff:10.0.0.1'), allow.allows('2001:db8::1')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(allow.warnings).toEqual([]);
  });

  test('an absent or unreadable source address is refused', () => {
    const allow = list('0.0.0.0/0,::/0');
    for (const ip of [undefined, '', 'localhost', '1.2.3', '1.2.3.4:80', '[::1]']) expect(allow.allows(ip)).toBe(false);
  });

  test.each([
    ['10.0.0.0/33', /prefix length outside 0 to 32/],
    ['2001:db8::/129', /prefix length outside 0 to 128/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/-1', /prefix length/],
    ['10.0.0.0/8/9', /prefix length/],
    ['10.0.0.256/24', /is not an IPv4 or IPv6 range/],
    ['example.com/24', /is not an IPv4 or IPv6 range/],
    ['10.0.0.0 10.0.1.0', /is not an IPv4 or IPv6 range/],
  ])('%p is refused with one sentence naming it', (entry, reason) => {
    let error: unknown;
    try {
      parseAllowList(`192.0.2.0/24,${entry}`);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AllowListError);
    const message = (error as Error).message;
    expect(message).toMatch(reason);
    expect(message).toContain(JSON.stringify(entry));
    expect(message.startsWith('ALLOWED_SOURCE_CIDRS: ')).toBe(true);
    expect(message.split('\n')).toHaveLength(1);
    expect(message.endsWith('.')).toBe(true);
  });
});
