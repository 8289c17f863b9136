// Captures every log line written through lib/log.ts while a test file runs, and checks that none of them
// gives away what must stay private: a configured secret, a signature value, or a whole callback body.
import { setLogSink, type LogSink } from '../../../lib/log.ts';

export interface LogCapture {
  readonly lines: string[];
  /** Remembers a value that must never appear in a log line. */
  secret(value: string): void;
  signature(value: string): void;
  /** The signature values remembered, lower-cased. */
  signatureValues(): string[];
  body(raw: string): void;
  /** Lines that contain a remembered value, each with what it contains; empty when nothing leaked. */
  leaks(): string[];
  /** How many values of each kind are checked. */
  counts(): { lines: number; secrets: number; signatures: number; bodies: number };
  restore(): void;
}

/** Bodies shorter than this could appear in a log line by chance (`{}`, `1`), without being a leak. */
const MIN_BODY_CHARS = 24;

export function captureLogs(): LogCapture {
  const lines: string[] = [];
  const secrets = new Set<string>();
  const signatures = new Set<string>();
  const bodies = new Set<string>();
  const previous: LogSink = setLogSink((line) => {
    lines.push(line);
  });
  return {
    lines,
    secret: (value) => void secrets.add(value),
    signature: (value) => void signatures.add(value.toLowerCase()),
    signatureValues: () => [...signatures],
    body: (raw) => {
      if (raw.length >= MIN_BODY_CHARS) bodies.add(raw);
    },
    leaks() {
      // Every string a line holds (keys and values, at any depth) and every nested object or array in its
      // compact JSON form: a leaked value is inside one of them, and few of them are long, so each body is
      // only compared with the few strings at least as long as itself.
      const pieces: string[] = [];
      const walk = (v: unknown): void => {
        if (typeof v === 'string') pieces.push(v);
        else if (Array.isArray(v)) {
          pieces.push(JSON.stringify(v));
          v.forEach(walk);
        } else if (v !== null && typeof v === 'object') {
          pieces.push(JSON.stringify(v));
          for (const [k, child] of Object.entries(v)) {
            pieces.push(k);
            walk(child);
          }
        }
      };
      for (const line of lines) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          pieces.push(line);
          continue;
        }
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
          for (const [k, child] of Object.entries(parsed)) {
            pieces.push(k);
            walk(child);
          }
        } else walk(parsed);
      }
      const candidates = [...new Set(pieces.filter((p) => p.length >= 8))].sort((a, b) => b.length - a.length);
      const text = candidates.join('\n');
      const lower = text.toLowerCase();
      const found: string[] = [];
      const around = (haystack: string, i: number) =>
        haystack.slice(Math.max(0, haystack.lastIndexOf('\n', i) + 1), i + 80);
      for (const s of secrets) {
        const i = text.indexOf(s);
        if (i !== -1) found.push(`secret ${JSON.stringify(s)} in: ${around(text, i)}`);
      }
      for (const s of signatures) {
        const i = lower.indexOf(s);
        if (i !== -1) found.push(`signature ${s} in: ${around(lower, i)}`);
      }
      for (const b of bodies) {
        for (const c of candidates) {
          if (c.length < b.length) break;
          if (c.includes(b)) {
            found.push(`body of ${b.length} chars in: ${c.slice(0, 200)}`);
            break;
          }
        }
      }
      return found;
    },
    counts: () => ({ lines: lines.length, secrets: secrets.size, signatures: signatures.size, bodies: bodies.size }),
    restore: () => void setLogSink(previous),
  };
}
