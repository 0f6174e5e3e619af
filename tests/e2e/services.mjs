// Servers a test owns and may stop and restart (a Redis it kills mid-load, say): started from
// Debian's packages on a free loopback port, as the package's unprivileged user when the test runs
// as root (CI), killed when the test ends. scripts/services.sh starts the long-lived ones.
import { spawn, execFileSync } from 'node:child_process';
import net from 'node:net';
import { sleep } from './harness.mjs';

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function asUser(user, bin, args) {
  if (process.getuid?.() === 0) return ['runuser', ['-u', user, '--', bin, ...args]];
  return [bin, args];
}

function redisAnswers(port) {
  try {
    return execFileSync('redis-cli', ['-p', String(port), 'ping'], { timeout: 2000 }).toString().trim() === 'PONG';
  } catch {
    return false;
  }
}

export const haveRedis = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/// A throwaway redis-server with no persistence: a restart comes back empty.
export class RedisServer {
  static async start() {
    const r = new RedisServer();
    r.port = await freePort();
    r.url = `redis://127.0.0.1:${r.port}`;
    await r.resume();
    return r;
  }

  async resume() {
    const [bin, args] = asUser('redis', 'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no',
       '--dir', '/tmp', '--maxmemory-policy', 'noeviction']);
    // Its own process group: a kill reaches redis-server itself, not only runuser.
    this.child = spawn(bin, args, { stdio: 'ignore', detached: true });
    for (let i = 0; i < 200 && !redisAnswers(this.port); i++) await sleep(25);
    if (!redisAnswers(this.port)) throw new Error(`redis-server did not answer on port ${this.port}`);
  }

  /// Kills the server (its data is gone: nothing is persisted).
  async stop() {
    if (!this.child || this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    try { process.kill(-this.child.pid, 'SIGKILL'); } catch { this.child.kill('SIGKILL'); }
    await exited;
    for (let i = 0; i < 100 && redisAnswers(this.port); i++) await sleep(20);
    this.child = null;
  }

  cli(...args) {
    return execFileSync('redis-cli', ['-p', String(this.port), ...args], { timeout: 2000 }).toString().trim();
  }
}
