// What another process needs to start the dockershim: its entry point on this machine. A subpath
// of its own (`@kh/dockershim/command`), so importing it loads nothing else.
import { fileURLToPath } from 'node:url';

/** The built `dockershim` command (dist/cli.js). */
export const DOCKERSHIM_COMMAND = fileURLToPath(new URL('./cli.js', import.meta.url));
