// Gives a wasm module's own linear memory a maximum: the module can then never hold more than
// CAP bytes, as on a device whose browser grants less. web/package-check.sh uses it to show
// that a streamed load fits a heap smaller than the model's file. Usage:
//   node cap-memory.mjs IN.wasm OUT.wasm CAP-BYTES
import { readFileSync, writeFileSync } from 'node:fs';

const [input, output, capArg] = process.argv.slice(2);
const cap = Number(capArg);
if (!input || !output || !Number.isSafeInteger(cap) || cap <= 0 || cap % 65536 !== 0) {
  console.error('usage: node cap-memory.mjs IN.wasm OUT.wasm CAP-BYTES (a multiple of 65536)');
  process.exit(2);
}
const wasm = readFileSync(input);

function leb(bytes, at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}
function encode(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return out;
}

if (wasm.readUInt32LE(0) !== 0x6d736100) throw new Error(`${input} is not a wasm module`);
const parts = [wasm.subarray(0, 8)];
let at = 8, capped = 0;
while (at < wasm.length) {
  const id = wasm[at];
  const [size, body] = leb(wasm, at + 1);
  const end = body + size;
  if (id === 5) {
    // The memory section: a count, then each memory's limits (flags, minimum, [maximum]).
    let [count, p] = leb(wasm, body);
    const out = encode(count);
    for (let i = 0; i < count; i++) {
      const flags = wasm[p++];
      if (flags & ~1) throw new Error(`memory ${i} has limit flags ${flags}: only plain 32-bit memories are capped`);
      let min;
      [min, p] = leb(wasm, p);
      if (flags & 1) [, p] = leb(wasm, p);
      const pages = cap / 65536;
      if (min > pages) throw new Error(`memory ${i} starts at ${min * 65536} bytes, over the cap`);
      out.push(1, ...encode(min), ...encode(pages));
      capped++;
    }
    if (p !== end) throw new Error('the memory section holds more than its memories');
    parts.push(Buffer.from([5, ...encode(out.length), ...out]));
  } else {
    parts.push(wasm.subarray(at, end));
  }
  at = end;
}
if (capped !== 1) throw new Error(`${input} defines ${capped} memories, not one (an imported memory is not capped here)`);
writeFileSync(output, Buffer.concat(parts));
console.log(`capped ${input}'s memory at ${cap} bytes: ${output}`);
