import { NotFoundError } from '@kh/cri-api';
import type { ContainerInspect } from '../docker/client.js';
import { isDockerNotFound } from '../docker/errors.js';
import { ContainerType, LabelKeys } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { required, toCriError } from './errors.js';

const DOCKER_ID_OR_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

const NOUN: Record<ContainerType, string> = { podsandbox: 'pod sandbox', container: 'container' };

/**
 * Inspects the Docker container behind a CRI id (from the inspect cache when it holds that id), or
 * undefined when there is none of that kind: a sandbox id passed as a container id is "not found", as
 * it is to containerd.
 */
export async function findManaged(
  ctx: ShimContext,
  id: string,
  kind: ContainerType,
): Promise<ContainerInspect | undefined> {
  // Docker's ids are hex and its names [a-zA-Z0-9][a-zA-Z0-9_.-]*: anything else names no
  // container, and must not reach the Engine's URL path ("../x" draws a redirect docker-modem
  // follows off the socket, to a host named by the path).
  if (!DOCKER_ID_OR_NAME.test(id)) return undefined;
  const known = ctx.known.kindOf(id);
  if (known !== undefined && known !== kind) return undefined;
  const cached = ctx.inspects.get(id);
  if (cached) return cached.Config.Labels?.[LabelKeys.containerType] === kind ? cached : undefined;
  const mark = ctx.inspects.mark();
  let info: ContainerInspect;
  try {
    info = await ctx.docker.inspectContainer(id);
  } catch (err) {
    if (isDockerNotFound(err)) return undefined;
    throw toCriError(err, `inspect ${NOUN[kind]} ${JSON.stringify(id)}`);
  }
  const type = info.Config.Labels?.[LabelKeys.containerType];
  if (type === ContainerType.sandbox || type === ContainerType.container) {
    ctx.known.add(info.Id, type);
    ctx.inspects.put(info, mark);
  }
  return type === kind ? info : undefined;
}

/** Like findManaged, but INVALID_ARGUMENT for an empty id and NOT_FOUND for an unknown one. */
export async function getManaged(
  ctx: ShimContext,
  id: string,
  kind: ContainerType,
  field: string,
): Promise<ContainerInspect> {
  required(id, field);
  const info = await findManaged(ctx, id, kind);
  if (!info) throw new NotFoundError(`${NOUN[kind]} ${JSON.stringify(id)} not found`);
  return info;
}
