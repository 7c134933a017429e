// What the headless checks share (web/drive.mjs, web/generate-check.mjs): Debian's chromium
// (CHROMIUM overrides the path) with WebGPU enabled and background traffic off, and a failure
// list that sets the exit status.
import { chromium } from 'playwright-core';

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--enable-unsafe-webgpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-default-apps',
      '--disable-sync',
      '--no-first-run',
      '--no-sandbox',
    ],
  });
}

// `fail(text)` prints a failure and remembers it; `failed()` says whether any was printed.
export function failures() {
  let any = false;
  return {
    fail: (text) => {
      console.error(`FAIL: ${text}`);
      any = true;
    },
    failed: () => any,
  };
}
