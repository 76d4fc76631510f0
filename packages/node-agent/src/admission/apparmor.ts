// The kubelet's AppArmor admit handler: a pod that asks for any AppArmor profile but Unconfined
// (through the field or the annotation) cannot run where AppArmor is off, and fails at admission
// rather than run unconfined.
import { readFileSync } from 'node:fs';
import { podRequiresAppArmor } from '@kh/runtime-manager';
import type { AdmitHandler, AdmitResult, PodAdmitAttributes } from './handler.js';

/** AppArmor is on when the kernel module says so (what runc's apparmor.IsEnabled reads). */
export function hostAppArmorEnabled(path = '/sys/module/apparmor/parameters/enabled'): boolean {
  try {
    return readFileSync(path, 'utf8').startsWith('Y');
  } catch {
    return false;
  }
}

export class AppArmorAdmitHandler implements AdmitHandler {
  constructor(private readonly enabled: boolean) {}

  admit({ pod }: PodAdmitAttributes): AdmitResult {
    if (this.enabled || !podRequiresAppArmor(pod)) return { admit: true };
    return {
      admit: false,
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
    };
  }
}
