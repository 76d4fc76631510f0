import { type Progress, silent } from '../util/progress.js';
import { ensureImages } from './ensure.js';
import { buildGoProgram, goSourceDigest } from './go.js';
import { goVendorSha256 } from './hash.js';

/**
 * The static binary of a Go main package kept outside the images (a bench's client, say), built as
 * the images' Go programs are: in the go-trixie image (built first if missing), offline, against
 * cri-tools v1.33's vendored modules, cached by content. `name` names the binary and its cache entry.
 */
export async function goProgramAt(
  sourceDir: string,
  name: string,
  progress: Progress = silent,
): Promise<string> {
  // The source and the tarball first: a wrong directory fails before any image is built.
  const source = await goSourceDigest(sourceDir);
  const vendorSha256 = await goVendorSha256();
  const { 'go-trixie': toolchain } = await ensureImages(['go-trixie'], { progress });
  return buildGoProgram(name, sourceDir, { toolchain, vendorSha256, source }, progress);
}
