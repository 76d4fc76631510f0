// What another process needs to start the in-memory fake runtime (`@kh/cri-api/fake-command`).
import { fileURLToPath } from 'node:url';

/** The built `fake-cri` command (dist/fake/cli.js). */
export const FAKE_CRI_COMMAND = fileURLToPath(new URL('./cli.js', import.meta.url));
