import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium, headless, for end-to-end tests (no downloads: playwright-core drives the system browser). */
export const CHROMIUM_PATH = process.env.FLOWGATE_CHROMIUM ?? '/usr/bin/chromium';

export function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', ...extraArgs],
  });
}
