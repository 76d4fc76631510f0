import { describe, expect, it } from 'vitest';
import type { Isolation } from '../../src/framework/scenario.js';
import {
  CellScheduler,
  lanesFor,
  lanesWithOwnDisk,
  type PlannedCell,
  scheduleOrder,
} from '../../src/run/schedule.js';

const cell = (
  scenario: string,
  isolation: Isolation,
  estimateMs = 1_000,
  exclusive: string[] = [],
  runtime = 'rt',
): PlannedCell => ({ runtime, scenario, isolation, exclusive, estimateMs });

const names = (placed: { cell: PlannedCell; node: string }[]) =>
  placed.map((p) => `${p.cell.scenario}@${p.node}`);

describe('scheduleOrder', () => {
  it('puts world cells first, then the longest chain of cells sharing a host resource, then the longest cell', () => {
    const order = scheduleOrder([
      cell('short', 'namespace', 10),
      cell('long', 'node', 300),
      cell('disk-a', 'node', 200, ['host-disk']),
      cell('disk-b', 'node', 150, ['host-disk']),
      cell('restart', 'world', 5),
    ]);
    // disk-a and disk-b form a 350 chain, longer than the 300 cell.
    expect(order.map((c) => c.scenario)).toEqual(['restart', 'disk-a', 'disk-b', 'long', 'short']);
  });
});

describe('CellScheduler', () => {
  it('packs namespace cells onto one node and gives each node cell a node of its own', () => {
    const s = new CellScheduler(
      [
        cell('ns-1', 'namespace', 50),
        cell('ns-2', 'namespace', 40),
        cell('alone-1', 'node', 30),
        cell('alone-2', 'node', 20),
      ],
      new Map([['rt', ['n1', 'n2', 'n3']]]),
      8,
    );
    expect(names(s.take())).toEqual(['ns-1@n1', 'ns-2@n1', 'alone-1@n2', 'alone-2@n3']);
    expect(s.besides(cell('x', 'namespace'))).toEqual([]);
    expect(s.done).toBe(false);
  });

  it('places nothing more on a retired node; its running cells still count until they finish', () => {
    const dying = cell('dying', 'node', 90);
    const [w, x, y] = [cell('w', 'world', 1), cell('x', 'node', 50), cell('y', 'node', 40)];
    const other = cell('other', 'node', 10, [], 'rt2');
    const s = new CellScheduler(
      [dying, w, x, y, other],
      new Map([
        ['rt', ['n1', 'n2']],
        ['rt2', ['m1']],
      ]),
      8,
      2,
    );
    // The world cell goes first, alone.
    expect(names(s.take())).toEqual(['w@n1']);
    s.finish(w);
    expect(names(s.take())).toEqual(['dying@n1', 'x@n2']);
    expect(s.retire('n1')).toEqual([]);
    expect(s.retire('n1')).toEqual([]);
    // Two cells run (one on the retired node): the cap of 2 holds.
    expect(s.take()).toEqual([]);
    s.finish(dying);
    // n1 is empty but retired: y waits for n2, other runs on its own runtime's node.
    expect(names(s.take())).toEqual(['other@m1']);
    s.finish(x);
    expect(names(s.take())).toEqual(['y@n2']);
  });

  it("hands back a runtime's pending cells when its last node retires, and runs the others", () => {
    const [a, b, c] = [cell('a', 'node', 30), cell('b', 'node', 20), cell('c', 'namespace', 10)];
    const elsewhere = cell('elsewhere', 'node', 5, [], 'rt2');
    const s = new CellScheduler(
      [a, b, c, elsewhere],
      new Map([
        ['rt', ['n1']],
        ['rt2', ['m1']],
      ]),
      8,
      1,
    );
    expect(names(s.take())).toEqual(['a@n1']);
    expect(s.retire('n1').map((p) => p.scenario)).toEqual(['b', 'c']);
    s.finish(a);
    expect(names(s.take())).toEqual(['elsewhere@m1']);
    s.finish(elsewhere);
    expect(s.done).toBe(true);
    expect(s.waiting()).toEqual([]);
  });

  it('never puts a node cell beside another cell, and starts it when its node empties', () => {
    const ns = cell('ns', 'namespace', 50);
    const alone = cell('alone', 'node', 40);
    const s = new CellScheduler([ns, alone], new Map([['rt', ['n1']]]), 8);
    expect(names(s.take())).toEqual(['ns@n1']);
    expect(s.take()).toEqual([]);
    s.finish(ns);
    expect(names(s.take())).toEqual(['alone@n1']);
    s.finish(alone);
    expect(s.done).toBe(true);
  });

  it('keeps cells holding the same host resource apart, across runtimes, and fills in with others', () => {
    const a = cell('disk', 'node', 100, ['host-disk'], 'one');
    const b = cell('disk', 'node', 100, ['host-disk'], 'two');
    const other = cell('other', 'node', 10, [], 'two');
    const s = new CellScheduler(
      [a, b, other],
      new Map([
        ['one', ['o1']],
        ['two', ['t1', 't2']],
      ]),
      8,
    );
    expect(names(s.take())).toEqual(['disk@o1', 'other@t1']);
    s.finish(a);
    expect(names(s.take())).toEqual(['disk@t2']);
  });

  it('runs cells sharing a host resource side by side, but never beside a cell holding it alone', () => {
    const bomb = cell('pids', 'node', 500, ['host-pids'], 'one');
    const bomb2 = cell('pids', 'node', 500, ['host-pids'], 'two');
    const probes = { ...cell('probes', 'namespace', 100, [], 'one'), shared: ['host-pids'] };
    const probes2 = { ...cell('probes', 'namespace', 100, [], 'two'), shared: ['host-pids'] };
    const other = cell('other', 'namespace', 10, [], 'two');
    const s = new CellScheduler(
      [bomb, bomb2, probes, probes2, other],
      new Map([
        ['one', ['o1', 'o2']],
        ['two', ['t1', 't2']],
      ]),
      8,
    );
    // The bomb holds host-pids alone: the sharers wait, others fill in.
    expect(names(s.take())).toEqual(['pids@o1', 'other@t1']);
    s.finish(bomb);
    // The other bomb comes first in the order; the sharers still wait.
    expect(names(s.take())).toEqual(['pids@t2']);
    s.finish(bomb2);
    // Sharers run together.
    expect(names(s.take())).toEqual(['probes@o1', 'probes@t1']);
    expect(s.take()).toEqual([]);
  });

  it('starts no exclusive holder while a sharer runs', () => {
    const probes = { ...cell('probes', 'namespace', 900, [], 'one'), shared: ['host-pids'] };
    const bomb = cell('pids', 'node', 100, ['host-pids'], 'two');
    const s = new CellScheduler(
      [probes, bomb],
      new Map([
        ['one', ['o1']],
        ['two', ['t1']],
      ]),
      8,
    );
    expect(names(s.take())).toEqual(['probes@o1']);
    s.finish(probes);
    expect(names(s.take())).toEqual(['pids@t1']);
  });

  it('runs a world cell alone: first, and nothing starts until it ends', () => {
    const world = cell('restart', 'world', 5);
    const later = cell('later', 'namespace', 500);
    const s = new CellScheduler([later, world], new Map([['rt', ['n1', 'n2']]]), 8);
    expect(names(s.take())).toEqual(['restart@n1']);
    expect(s.take()).toEqual([]);
    s.finish(world);
    expect(names(s.take())).toEqual(['later@n1']);
  });

  it('caps the namespace cells on one node and spills onto the next', () => {
    const cells = ['a', 'b', 'c'].map((n) => cell(n, 'namespace'));
    const s = new CellScheduler(cells, new Map([['rt', ['n1', 'n2']]]), 2);
    expect(names(s.take())).toEqual(['a@n1', 'b@n1', 'c@n2']);
    expect(s.besides(cells[0]!)).toEqual(['b']);
  });

  it('runs no more cells at once in the whole run than it is allowed', () => {
    const cells = ['a', 'b', 'c'].map((n) => cell(n, 'node'));
    const s = new CellScheduler(cells, new Map([['rt', ['n1', 'n2', 'n3']]]), 8, 2);
    expect(names(s.take())).toEqual(['a@n1', 'b@n2']);
    expect(s.take()).toEqual([]);
    s.finish(cells[0]!);
    expect(names(s.take())).toEqual(['c@n1']);
  });

  it('runs at most half as many heavy cells at once as cells in all, filling the rest with light ones', () => {
    const heavy = (n: string) => ({ ...cell(n, 'node', 400), heavy: true });
    const cells = [heavy('h1'), heavy('h2'), heavy('h3'), cell('l1', 'node', 100), cell('l2', 'node', 100)];
    const s = new CellScheduler(cells, new Map([['rt', ['n1', 'n2', 'n3', 'n4', 'n5']]]), 8, 4);
    expect(names(s.take())).toEqual(['h1@n1', 'h2@n2', 'l1@n3', 'l2@n4']);
    s.finish(cells[3]!);
    expect(s.take()).toEqual([]);
    s.finish(cells[0]!);
    expect(names(s.take())).toEqual(['h3@n1']);
  });

  it('starts a heavy cell only when every running heavy cell started the spacing ago; light cells do not wait', () => {
    let now = 1_000;
    const heavy = (n: string) => ({ ...cell(n, 'node', 400), heavy: true });
    const cells = [heavy('h1'), heavy('h2'), cell('l1', 'node', 100)];
    const s = new CellScheduler(cells, new Map([['rt', ['n1', 'n2', 'n3']]]), 8, 4, {
      heavyStartSpacingMs: 45_000,
      now: () => now,
    });
    expect(names(s.take())).toEqual(['h1@n1', 'l1@n2']);
    expect(s.wakeAt()).toBe(46_000);
    now = 45_999;
    expect(s.take()).toEqual([]);
    now = 46_000;
    expect(names(s.take())).toEqual(['h2@n3']);
    expect(s.wakeAt()).toBeUndefined();
  });

  it('spaces heavy cells on the monotonic clock, which a stepped wall clock does not move', () => {
    const heavy = (n: string) => ({ ...cell(n, 'node', 400), heavy: true });
    const s = new CellScheduler([heavy('h1'), heavy('h2')], new Map([['rt', ['n1', 'n2']]]), 8, 4, {
      heavyStartSpacingMs: 1_000,
    });
    // performance.now counts from the process's start; Date.now from 1970.
    expect(Math.abs(s.now() - performance.now())).toBeLessThan(1_000);
    expect(names(s.take())).toEqual(['h1@n1']);
    expect(s.wakeAt()! - s.now()).toBeLessThanOrEqual(1_000);
  });

  it('does not space a heavy cell from one that has finished', () => {
    const now = 0;
    const cells = [
      { ...cell('h1', 'node'), heavy: true },
      { ...cell('h2', 'node'), heavy: true },
    ];
    const s = new CellScheduler(cells, new Map([['rt', ['n1']]]), 8, 4, {
      heavyStartSpacingMs: 45_000,
      now: () => now,
    });
    expect(names(s.take())).toEqual(['h1@n1']);
    s.finish(cells[0]!);
    expect(s.wakeAt()).toBeUndefined();
    expect(names(s.take())).toEqual(['h2@n1']);
  });

  it('puts a heavy namespace cell on a node without a heavy cell while one has room; light cells still pack', () => {
    const heavy = (n: string) => ({ ...cell(n, 'namespace', 400), heavy: true });
    const cells = [
      cell('l1', 'namespace', 500),
      heavy('h1'),
      heavy('h2'),
      heavy('h3'),
      cell('l2', 'namespace', 50),
    ];
    const s = new CellScheduler(cells, new Map([['rt', ['n1', 'n2']]]), 8, 8);
    // h1 packs beside l1; h2 takes the node without a heavy cell; h3 finds none and packs onto the
    // fuller node, as l2 does.
    expect(names(s.take())).toEqual(['l1@n1', 'h1@n1', 'h2@n2', 'h3@n1', 'l2@n1']);
  });

  it('lets one heavy cell run even when only one cell may run at all', () => {
    const s = new CellScheduler([{ ...cell('h', 'node'), heavy: true }], new Map([['rt', ['n1']]]), 8, 1);
    expect(names(s.take())).toEqual(['h@n1']);
  });

  it('runs ownDisk cells side by side, each on a node with a disk of its own, and other cells never there', () => {
    const disk = (name: string, runtime = 'rt') => ({
      ...cell(name, 'node', 100, [], runtime),
      ownDisk: true,
    });
    const s = new CellScheduler(
      [disk('disk-a'), disk('disk-b'), disk('disk-c'), cell('plain', 'node', 50), disk('disk-a', 'rt2')],
      new Map([
        ['rt', ['n1', 'd1', 'd2']],
        ['rt2', ['d3']],
      ]),
      8,
      Number.POSITIVE_INFINITY,
      {},
      (node) => node.startsWith('d'),
    );
    // Three disk cells of one runtime and one of another at once; the third of rt waits for a disk node.
    expect(names(s.take())).toEqual(['disk-a@d1', 'disk-b@d2', 'disk-a@d3', 'plain@n1']);
    expect(s.waiting().map((c) => c.scenario)).toEqual(['disk-c']);
  });

  it('puts an ownDisk cell on a plain node when its runtime has no disk node, rather than never', () => {
    const s = new CellScheduler(
      [{ ...cell('disk', 'node'), ownDisk: true }],
      new Map([['rt', ['n1']]]),
      8,
      Number.POSITIVE_INFINITY,
      {},
      () => false,
    );
    expect(names(s.take())).toEqual(['disk@n1']);
  });

  it('lists the cells it has not placed, and refuses a cell whose runtime has no node', () => {
    const s = new CellScheduler([cell('a', 'node'), cell('b', 'node')], new Map([['rt', ['n1']]]), 8);
    s.take();
    expect(s.waiting().map((c) => c.scenario)).toEqual(['b']);
    expect(() => new CellScheduler([cell('a', 'node', 1, [], 'gone')], new Map(), 8)).toThrow(
      'no node for gone/a',
    );
  });
});

describe('lanesFor', () => {
  it('asks one node per cell that needs one alone and one for the shared cells, within the cap', () => {
    const cells = [cell('a', 'node'), cell('b', 'world'), cell('c', 'namespace'), cell('d', 'namespace')];
    expect(lanesFor(cells, 10)).toBe(3);
    expect(lanesFor(cells, 2)).toBe(2);
    expect(lanesFor([], 4)).toBe(1);
  });
});

describe('lanesWithOwnDisk', () => {
  const disk = (name: string) => ({ ...cell(name, 'node'), ownDisk: true });
  it('asks one disk node per ownDisk cell within the cap, besides the plain nodes of the other cells', () => {
    const cells = [disk('a'), disk('b'), disk('c'), cell('d', 'node'), cell('e', 'namespace')];
    expect(lanesWithOwnDisk(cells, 4)).toEqual({ plain: 2, ownDisk: 3 });
    expect(lanesWithOwnDisk(cells, 2)).toEqual({ plain: 2, ownDisk: 2 });
    expect(lanesWithOwnDisk([disk('a')], 4)).toEqual({ plain: 0, ownDisk: 1 });
    expect(lanesWithOwnDisk([], 4)).toEqual({ plain: 1, ownDisk: 0 });
  });
});
