// Where in a bucket a reported file lives: the path of its fileUrl (the platform's URL of the stored file, for a
// path-style URL without the bucket's own segment), or the setting's prefix and the file's name.
import type { S3CompatibleSetting, S3Setting } from '../../config/storage-settings.ts';

/** The object key of a file, or why the reported URL does not name one. */
export function objectKeyOf(
  setting: S3Setting | S3CompatibleSetting,
  fileName: string,
  fileUrl: string | null,
): { key: string } | { error: string } {
  if (setting.key === 'file-name') return { key: `${setting.prefix}${fileName}` };
  let url: URL;
  try {
    url = new URL(fileUrl ?? '');
  } catch {
    return { error: 'the reported fileUrl is not a URL, so it names no object of the bucket' };
  }
  let path: string;
  try {
    path = decodeURIComponent(url.pathname).replace(/^\/+/, '');
  } catch {
    return { error: 'the reported fileUrl has a path that is not valid percent-encoding' };
  }
  // A path-style URL (https://<endpoint>/<bucket>/<key>) names the bucket first; a virtual-hosted one does not.
  const [first, ...rest] = path.split('/');
  if (first === setting.bucket && rest.length > 0 && !url.hostname.startsWith(`${setting.bucket}.`))
    path = rest.join('/');
  if (path === '') return { error: 'the reported fileUrl has no path, so it names no object of the bucket' };
  return { key: path };
}
