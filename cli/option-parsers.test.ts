import { InvalidArgumentError } from 'commander';
import { cidrList, faultRates, httpUrl, instant, portNumber, rate } from './option-parsers.ts';

test('a port, a rate and an instant', () => {
  expect(['0', '3000', '65535'].map(portNumber)).toEqual([0, 3000, 65535]);
  expect(() => portNumber('65536')).toThrow(new InvalidArgumentError('a whole number from 0 to 65535 is needed.'));
  expect(rate('.25')).toBe(0.25);
  expect(() => rate('1.5')).toThrow(InvalidArgumentError);
  expect(instant('1795252977701')).toBe(1795252977701);
  expect(instant('2026-11-22T10:00:00Z')).toBe(Date.UTC(2026, 10, 22, 10));
  expect(() => instant('yesterday')).toThrow(new InvalidArgumentError('must be epoch milliseconds or an ISO date.'));
});

test('source ranges: repeatable, comma lists, normalised; a bad one named without the option twice', () => {
  const parse = cidrList('--allow-cidr');
  expect(parse('10.0.0.0/8, 192.0.2.1', parse('2001:db8::/32'))).toEqual([
    '2001:db8::/32',
    '10.0.0.0/8',
    '192.0.2.1/32',
  ]);
  expect(() => parse('10.0.0.0/33')).toThrow(/^"10\.0\.0\.0\/33" has a prefix length outside 0 to 32/);
  expect(() => parse(' , ')).toThrow(/^--allow-cidr is set but names no range/);
});

test('faults and URLs', () => {
  expect(faultRates('crash=0.5')).toEqual({ crash: 0.5 });
  expect(() => faultRates('crash=2')).toThrow(
    new InvalidArgumentError('crash needs a rate from 0 to 1, as in crash=0.05 (not "crash=2").'),
  );
  expect(httpUrl('https://abc.execute-api.eu-west-1.amazonaws.com')).toBe(
    'https://abc.execute-api.eu-west-1.amazonaws.com/',
  );
  expect(() => httpUrl('ftp://x')).toThrow(InvalidArgumentError);
});
