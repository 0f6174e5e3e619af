// Tiny media fixtures for the e2e tests: image headers (PNG, JPEG, GIF, WebP) that the gateway
// and the simulator read dimensions from, and base64 data: URLs.
export function png(w, h) {
  const b = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0);
  b.writeUInt32BE(13, 8);
  b.write('IHDR', 12, 'latin1');
  b.writeUInt32BE(w, 16);
  b.writeUInt32BE(h, 20);
  b[24] = 8; b[25] = 6;
  return b;
}

export function jpeg(w, h) {
  // SOI, an APP0 (JFIF), an APP1 with filler and a DQT-like segment before the frame, then SOF2.
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  const filler = Buffer.alloc(300, 0x41);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, (filler.length + 2) >> 8, (filler.length + 2) & 0xff]), filler]);
  const dht = Buffer.from([0xff, 0xc4, 0x00, 0x04, 0x00, 0x00]); // C4 is not a frame marker
  const sof = Buffer.from([0xff, 0xc2, 0x00, 0x11, 0x08, h >> 8, h & 0xff, w >> 8, w & 0xff, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, app1, Buffer.from([0xff]), dht, sof, Buffer.from([0xff, 0xda, 0, 2, 0xff, 0xd9])]);
}

export function gif(w, h) {
  const b = Buffer.alloc(13);
  b.write('GIF89a', 0, 'latin1');
  b.writeUInt16LE(w, 6);
  b.writeUInt16LE(h, 8);
  return b;
}

export function webp(kind, w, h) {
  const payload = Buffer.alloc(10);
  if (kind === 'VP8 ') {
    payload[3] = 0x9d; payload[4] = 0x01; payload[5] = 0x2a;
    payload.writeUInt16LE(w, 6);
    payload.writeUInt16LE(h, 8);
  } else if (kind === 'VP8L') {
    payload[0] = 0x2f;
    payload.writeUInt32LE(((w - 1) | ((h - 1) << 14)) >>> 0, 1);
  } else {
    payload.writeUIntLE(w - 1, 4, 3);
    payload.writeUIntLE(h - 1, 7, 3);
  }
  const chunk = Buffer.concat([Buffer.from(kind, 'latin1'), Buffer.from([10, 0, 0, 0]), payload]);
  const b = Buffer.concat([Buffer.from('RIFF\0\0\0\0WEBP', 'latin1'), chunk]);
  b.writeUInt32LE(b.length - 8, 4);
  return b;
}

/// Base64 with a line break every 76 characters (MIME style) to exercise whitespace skipping.
export const b64 = (buf) => buf.toString('base64').replace(/.{76}/g, '$&\n');
export const dataUrl = (type, buf) => `data:${type};base64,${b64(buf)}`;
