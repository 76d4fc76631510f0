import { normalizeImageRef } from '@kh/apimachinery';
import { InvalidArgumentError, NotFoundError } from '../api/errors.js';
import type { CriImageHandlers } from '../server/serve.js';
import { toImage } from './convert.js';
import type { FakeState } from './state.js';

const IMAGE_FS_MOUNT = '/var/lib/fake-cri/images';

/** The fake's ImageService: a local image store fed by addImage and by pulls from a scripted registry. */
export function imageService(state: FakeState): Partial<CriImageHandlers> {
  return {
    listImages: (req) => {
      const wanted = req.filter?.image?.image;
      const img = wanted ? state.image(wanted) : undefined;
      const images = wanted ? (img ? [img] : []) : [...state.images.values()];
      return { images: images.map(toImage) };
    },
    // CRI: an unknown image is an empty answer, not an error.
    imageStatus: (req) => {
      const img = state.image(req.image?.image ?? '');
      return { image: img ? toImage(img) : undefined };
    },
    pullImage: (req) => {
      const ref = req.image?.image;
      if (!ref) throw new InvalidArgumentError('image reference is required');
      const norm = normalizeImageRef(ref);
      const failure = state.script.pullFailureFor(norm);
      if (failure) throw failure;
      const present = state.image(ref);
      if (present) return { imageRef: present.id };
      const size = state.script.registrySize(norm);
      if (size === undefined) {
        throw new NotFoundError(`failed to resolve reference "${norm}": ${norm}: not found`);
      }
      return { imageRef: state.addImage(norm, size).id };
    },
    removeImage: (req) => {
      state.removeImage(req.image?.image ?? '');
      return {};
    },
    imageFsInfo: () => {
      const fs = state.imageFs;
      const used = fs.usedBytes ?? [...state.images.values()].reduce((sum, i) => sum + i.size, 0n);
      return {
        imageFilesystems: [
          {
            timestamp: state.nowNs(),
            fsId: { mountpoint: IMAGE_FS_MOUNT },
            usedBytes: { value: BigInt(used) },
            inodesUsed: { value: BigInt(fs.inodesUsed ?? state.images.size) },
          },
        ],
        containerFilesystems: [],
      };
    },
  };
}
