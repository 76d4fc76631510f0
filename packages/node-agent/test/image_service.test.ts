import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime, serveCri } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectImageService } from '../src/runtime/image_service.js';
import { SummaryProvider } from '../src/stats/summary.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-imgsvc-'));
let runtime: FakeRuntime;
let images: FakeRuntime;

beforeAll(async () => {
  runtime = await FakeRuntime.start({ socketPath: join(dir, 'runtime.sock') });
  images = await FakeRuntime.start({ socketPath: join(dir, 'images.sock') });
  images.addImage('registry:5000/only-on-image-service:1', 7_000_000);
});
afterAll(async () => {
  await runtime?.stop();
  await images?.stop();
});

describe('connectImageService (--image-service-endpoint)', () => {
  it('returns no second client when the flag is unset or names the runtime endpoint', async () => {
    const ep = runtime.endpoint;
    expect(await connectImageService({ containerRuntimeEndpoint: ep, imageServiceEndpoint: '' }, {})).toBe(
      undefined,
    );
    expect(await connectImageService({ containerRuntimeEndpoint: ep, imageServiceEndpoint: ep }, {})).toBe(
      undefined,
    );
  });

  it('connects to a separate endpoint, whose images and image filesystem the agent then reports', async () => {
    const imageCri = await connectImageService(
      { containerRuntimeEndpoint: runtime.endpoint, imageServiceEndpoint: images.endpoint },
      { timeoutMs: 5_000 },
    );
    expect(imageCri).toBeDefined();
    const cri = await CriClient.connect(runtime.endpoint);
    try {
      const listed = await imageCri!.listImages({});
      expect(listed.images.flatMap((i) => i.repoTags)).toEqual(['registry:5000/only-on-image-service:1']);
      images.setImageFs({ usedBytes: 7_000_000n, capacityBytes: 100_000_000n, inodesUsed: 3n });
      runtime.setImageFs({ usedBytes: 1n, capacityBytes: 100_000_000n, inodesUsed: 1n });
      const summary = await new SummaryProvider({
        cri,
        imageCri: imageCri!,
        nodeName: 'n',
        rootDir: dir,
        clock: new FakeClock(),
      }).summary();
      expect(summary.node.runtime.imageFs.usedBytes).toBe(7_000_000);
    } finally {
      cri.close();
      imageCri?.close();
    }
  });

  it('fails start-up naming the endpoint when nothing listens there', async () => {
    const ep = `unix://${join(dir, 'nobody.sock')}`;
    await expect(
      connectImageService(
        { containerRuntimeEndpoint: runtime.endpoint, imageServiceEndpoint: ep },
        { connectTimeoutMs: 500 },
      ),
    ).rejects.toThrow(`validate CRI image endpoint ${ep}: `);
  });

  it('fails start-up when the endpoint serves no ImageService', async () => {
    const srv = await serveCri(
      { name: 'runtime-only', runtime: {}, image: {} },
      { socketPath: join(dir, 'runtime-only.sock') },
    );
    try {
      await expect(
        connectImageService(
          { containerRuntimeEndpoint: runtime.endpoint, imageServiceEndpoint: srv.endpoint },
          { timeoutMs: 2_000 },
        ),
      ).rejects.toThrow(/validate CRI image endpoint .*runtime-only\.sock: .*does not implement/);
    } finally {
      await srv.close();
    }
  });
});
