// The D-Bus wire format: what logind's replies carry decodes to what was encoded, a message is
// framed by its header alone, and a file descriptor (which Node cannot receive) is refused.
import { describe, expect, it } from 'vitest';
import { socketPath, systemBusAddress } from '../../src/nodeshutdown/systemd/bus.js';
import {
  decodeMessage,
  encodeMessage,
  MessageType,
  messageLength,
} from '../../src/nodeshutdown/systemd/wire.js';

describe('D-Bus wire format', () => {
  it('round-trips a reply with a variant, an array of structs and a boolean', () => {
    const header = { type: MessageType.MethodReturn, serial: 7, replySerial: 3, destination: ':1.5' };
    const inhibitors = [
      ['shutdown', 'kubelet', 'why', 'delay', 0, 1234],
      ['sleep', 'other', '', 'block', 1000, 99],
    ];
    const signature = 'va(ssssuu)b';
    const buf = encodeMessage({
      ...header,
      signature,
      body: [{ signature: 't', value: 30_000_000n }, inhibitors, true],
    });
    expect(messageLength(buf)).toBe(buf.length);
    expect(messageLength(buf.subarray(0, 15))).toBeUndefined();
    expect(decodeMessage(buf)).toEqual({ ...header, signature, body: [30_000_000n, inhibitors, true] });
  });

  it('refuses a unix file descriptor', () => {
    const buf = encodeMessage({
      type: MessageType.MethodReturn,
      serial: 1,
      replySerial: 1,
      signature: 'u',
      body: [3],
    });
    // Re-type the body as 'h' (UNIX_FD): same bytes, a type this client cannot take.
    const patched = Buffer.from(buf.toString('latin1').replace('\x01u\x00', '\x01h\x00'), 'latin1');
    expect(() => decodeMessage(patched)).toThrow('unix file descriptors cannot be received');
  });

  it('finds the system bus socket as libdbus does', () => {
    expect(systemBusAddress({})).toBe('unix:path=/var/run/dbus/system_bus_socket');
    expect(systemBusAddress({ DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/tmp/x' })).toBe('unix:path=/tmp/x');
    expect(socketPath('tcp:host=a;unix:path=/run/dbus/system_bus_socket')).toBe(
      '/run/dbus/system_bus_socket',
    );
    expect(socketPath('unix:abstract=/tmp/dbus-1')).toBe('\0/tmp/dbus-1');
    expect(() => socketPath('tcp:host=localhost,port=1')).toThrow('no unix socket');
  });
});
