// AWS Signature Version 4 written out step by step from AWS's description of the algorithm (canonical
// request, string to sign, derived key), as an independent check of the signing library the read API's
// documentation uses. Enough for a GET without a body.
import { createHash, createHmac } from 'node:crypto';

const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 encoding: everything but A-Z a-z 0-9 - _ . ~, hex in upper case. */
const uriEncode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface ReferenceRequest {
  method: string;
  host: string;
  /** Path as sent (percent-encoded) and query string without `?`. */
  path: string;
  query: string;
  /** Every signed header but host, by lower-case name. */
  headers: Record<string, string>;
  amzDate: string;
  region: string;
  service: string;
  secretAccessKey: string;
}

export function referenceSignature(r: ReferenceRequest): {
  canonicalRequest: string;
  signedHeaders: string;
  signature: string;
} {
  // Each path segment encoded twice for every service but S3.
  const path = r.path
    .split('/')
    .map((segment) => uriEncode(uriEncode(decodeURIComponent(segment))))
    .join('/');
  const query = r.query
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const [name, value = ''] = pair.split('=').map((p) => decodeURIComponent(p.replace(/\+/g, ' ')));
      return [uriEncode(name!), uriEncode(value)] as const;
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))
    .map(([n, v]) => `${n}=${v}`)
    .join('&');
  const headers: Record<string, string> = { ...r.headers, host: r.host };
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [r.method, path, query, canonicalHeaders, signedHeaders, sha256('')].join('\n');
  const day = r.amzDate.slice(0, 8);
  const scope = `${day}/${r.region}/${r.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', r.amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${r.secretAccessKey}`, day), r.region), r.service), 'aws4_request');
  return { canonicalRequest, signedHeaders, signature: createHmac('sha256', key).update(stringToSign).digest('hex') };
}
