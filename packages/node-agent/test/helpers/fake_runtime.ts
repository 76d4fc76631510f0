import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TimerClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { KubeGenericRuntimeManager } from '@kh/runtime-manager';

/** The runtime manager over a gRPC connection to the in-memory CRI runtime; stop() ends both. */
export async function fakeRuntimeManager(
  clock: TimerClock,
): Promise<{ fake: FakeRuntime; runtime: KubeGenericRuntimeManager; stop(): Promise<void> }> {
  const fake = await FakeRuntime.start({ clock });
  const cri = await CriClient.connect(fake.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'kh-fake-runtime-'));
  const runtime = await KubeGenericRuntimeManager.create({
    cri,
    clock,
    podLogsRootDir: join(dir, 'logs'),
    podsDir: join(dir, 'pods'),
  });
  return {
    fake,
    runtime,
    stop: async () => {
      cri.close();
      await fake.stop();
    },
  };
}
