// An npm package tarball (what `npm pack` writes): a gzipped ustar archive whose entries sit
// under `package/`, with a fixed date so that the same files give the same bytes. Written
// here so that building one needs neither npm nor a package manager that may want to download
// itself outside a project (corepack).
import { gzipSync } from 'node:zlib';

// npm pack's own fixed date: 1985-10-26T08:15:00Z.
const MTIME = Math.floor(Date.UTC(1985, 9, 26, 8, 15, 0) / 1000);

/** `value` as a NUL-terminated octal field of `width` bytes. */
function octal(value, width) {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`${value} does not fit a tar field of ${width} bytes`);
  return `${digits.padStart(width - 1, '0')}\0`;
}

function header(name, size, mode) {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(MTIME, 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum, counted as spaces
  h.write('0', 156, 'ascii'); // a regular file
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

/**
 * The .tgz of `files` ({ path relative to the package root: { data, mode } }), in the order
 * given: package.json first, as npm writes it.
 */
export function npmTarball(files) {
  const parts = [];
  for (const [path, { data, mode }] of Object.entries(files)) {
    const body = Buffer.isBuffer(data) ? data : Buffer.from(data);
    parts.push(header(`package/${path}`, body.length, mode), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024)); // two empty blocks end the archive
  return gzipSync(Buffer.concat(parts), { level: 9 });
}
