// What another process needs to start the fake apiserver and know when it serves
// (`@kh/fake-apiserver/command`).
import { fileURLToPath } from 'node:url';

/** The built `fake-apiserver` command (dist/cli.js). */
export const FAKE_APISERVER_COMMAND = fileURLToPath(new URL('./cli.js', import.meta.url));

/** The line the command prints on stderr once it serves; a supervisor waits for it. */
export const READY_LINE = 'fake-apiserver listening on';

export const readyLine = (url: string): string => `${READY_LINE} ${url}`;
