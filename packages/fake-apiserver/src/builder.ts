import type { AuthorizationMode } from './auth/authorizer.js';
import type { UserInfo } from './auth/tokens.js';
import type { Clock } from './meta/object.js';
import { type ApiServer, type ApiServerOptions, createApiServer } from './server.js';

/**
 * Fluent construction of a fake apiserver, in the style of the testkit's container builders:
 *
 *   const api = await new FakeApiServer().withTls().withToken('t', 'admin').withDataDir(dir).start();
 *   ...
 *   await api.close();
 */
export class FakeApiServer {
  private readonly opts: ApiServerOptions = {};
  private readonly tokens = new Map<string, UserInfo>();

  withPort(port: number): this {
    this.opts.port = port;
    return this;
  }

  withHost(host: string): this {
    this.opts.host = host;
    return this;
  }

  /** HTTPS with a generated CA; `hosts` are extra SANs (e.g. a docker network alias). */
  withTls(...hosts: string[]): this {
    this.opts.tls = true;
    this.opts.tlsHosts = hosts;
    return this;
  }

  withToken(token: string, user: string, groups: string[] = []): this {
    this.tokens.set(token, { name: user, uid: user, groups });
    return this;
  }

  withTokenFile(path: string): this {
    this.opts.tokens = path;
    return this;
  }

  /** kube-apiserver's --authorization-mode, e.g. withAuthorizationMode('Node', 'RBAC'). */
  withAuthorizationMode(...modes: AuthorizationMode[]): this {
    this.opts.authorizationMode = modes;
    return this;
  }

  withAnonymous(): this {
    this.opts.anonymous = true;
    return this;
  }

  withDataDir(dir: string): this {
    this.opts.dataDir = dir;
    return this;
  }

  withLeaseGraceSeconds(seconds: number): this {
    this.opts.leaseGraceSeconds = seconds;
    return this;
  }

  withClock(clock: Clock): this {
    this.opts.clock = clock;
    return this;
  }

  withoutScheduler(): this {
    this.opts.scheduler = false;
    return this;
  }

  /** kube-controller-manager's --allocate-node-cidrs --cluster-cidr=<cidr> [--node-cidr-mask-size=<n>]. */
  withNodeCidrAllocation(clusterCidr: string, nodeCidrMaskSize?: number): this {
    this.opts.nodeIpam = { clusterCidr, ...(nodeCidrMaskSize === undefined ? {} : { nodeCidrMaskSize }) };
    return this;
  }

  withoutNodeLifecycle(): this {
    this.opts.nodeLifecycle = false;
    return this;
  }

  start(): Promise<ApiServer> {
    if (this.tokens.size > 0) {
      if (typeof this.opts.tokens === 'string')
        throw new Error('FakeApiServer: use withToken or withTokenFile, not both');
      this.opts.tokens = this.tokens;
    }
    return createApiServer({ ...this.opts });
  }
}
