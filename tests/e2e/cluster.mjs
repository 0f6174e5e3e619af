// Several gateways behind Debian's nginx, sharing one PostgreSQL database and one Redis: what an
// operator runs when scaling out (docs/scale_out.md). Every process is a test's own and is killed
// when the test ends.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, mkdirSync, chmodSync, readFileSync, existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Gateway, sleep, waitFor } from './harness.mjs';
import { freePort } from './services.mjs';

export const POSTGRES = process.env.TOLLGATE_TEST_POSTGRES_URL ?? '';
export const REDIS = process.env.TOLLGATE_TEST_REDIS_URL ?? '';
export const REQUIRED = process.env.TOLLGATE_REQUIRE_SERVICES === '1';
/// A skip reason when the servers are not there (and not required), else false.
export const clusterSkip = (!POSTGRES || !REDIS) && !REQUIRED
  ? 'TOLLGATE_TEST_POSTGRES_URL / TOLLGATE_TEST_REDIS_URL are not set (eval "$(scripts/services.sh start)")' : false;

function psql(url, sql) {
  return execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

/// A fresh database on the test server (dropped by dropDatabase); its URL.
export function freshDatabase() {
  if (!POSTGRES) throw new Error('TOLLGATE_TEST_POSTGRES_URL is not set but TOLLGATE_REQUIRE_SERVICES=1');
  const name = `tg_test_${randomBytes(6).toString('hex')}`;
  psql(POSTGRES, `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
  const u = new URL(POSTGRES);
  u.pathname = `/${name}`;
  return { name, url: u.toString() };
}

export function dropDatabase(db) {
  try { psql(POSTGRES, `DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`); } catch { /* server gone */ }
}

/// One SQL query on a database; rows as arrays of strings.
export function query(dbUrl, sql) {
  return psql(dbUrl, sql).split('\n').filter((l) => l.length > 0).map((l) => l.split('|'));
}

/// Debian's nginx as the load balancer in front of `ports` (round robin; a connection refused goes
/// to the next instance, a request already sent is never replayed).
export class Nginx {
  static async start(ports) {
    const n = new Nginx();
    n.ports = ports;
    n.down = new Set();
    n.dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-nginx-'));
    chmodSync(n.dir, 0o777);
    for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) {
      mkdirSync(path.join(n.dir, d));
      chmodSync(path.join(n.dir, d), 0o777);
    }
    n.port = await freePort();
    n.url = `http://127.0.0.1:${n.port}`;
    const root = process.getuid?.() === 0;
    const conf = `${root ? 'user www-data;' : ''}
worker_processes 2;
daemon off;
pid ${n.dir}/nginx.pid;
error_log ${n.dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${n.dir}/body;
  proxy_temp_path ${n.dir}/proxy;
  fastcgi_temp_path ${n.dir}/fastcgi;
  uwsgi_temp_path ${n.dir}/uwsgi;
  scgi_temp_path ${n.dir}/scgi;
  client_max_body_size 16m;
  upstream tollgate {
${'$'}{SERVERS}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${n.port};
    location / {
      proxy_pass http://tollgate;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
      proxy_next_upstream error timeout;
    }
  }
}
`;
    n.template = conf;
    n.confPath = path.join(n.dir, 'nginx.conf');
    n.write();
    n.child = spawn('nginx', ['-c', n.confPath, '-p', n.dir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    n.stderr = '';
    n.child.stderr.on('data', (d) => { n.stderr += d; });
    await waitFor(async () => {
      try { await fetch(`${n.url}/health/liveliness`); return true; } catch { return false; }
    }, { timeoutMs: 10000, what: 'nginx answering' });
    return n;
  }

  write() {
    const servers = this.ports.map((p) => `    server 127.0.0.1:${p} max_fails=0${this.down.has(p) ? ' down' : ''};`).join('\n');
    writeFileSync(this.confPath, this.template.replace('${SERVERS}', servers));
  }

  /// Takes an instance out of rotation (`down`) or puts it back, and reloads nginx: new requests
  /// stop going there at once; requests already proxied finish on the old workers.
  async setDown(port, down) {
    if (down) this.down.add(port); else this.down.delete(port);
    this.write();
    process.kill(this.child.pid, 'SIGHUP');
    await sleep(300);
  }

  logs() {
    const f = path.join(this.dir, 'error.log');
    return `--- nginx ---\n${this.stderr}${existsSync(f) ? readFileSync(f, 'utf8').slice(-4000) : ''}`;
  }

  async stop() {
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      try { process.kill(-this.child.pid, 'SIGKILL'); } catch { /* gone */ }
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/// Waits until `g` answers /health/readiness with 200.
export function ready(g, timeoutMs = 15000) {
  return waitFor(async () => (await g.fetch('/health/readiness', { method: 'GET', auth: false })).status === 200,
    { timeoutMs, what: `${g.url} ready` });
}

/// `n` gateways on one config (each with its own data_dir), nginx in front. `front` is a Gateway
/// whose requests go through nginx (fetch, admin, generateKey, keyInfo).
export class Cluster {
  static async start(config, n = 3) {
    const c = new Cluster();
    c.config = config;
    c.ports = [];
    for (let i = 0; i < n; i++) c.ports.push(await freePort());
    c.gateways = await Promise.all(c.ports.map((port) => Gateway.start(config, { port })));
    // As a load balancer does: no traffic before readiness (the shared ledger's counters built).
    await Promise.all(c.gateways.map((g) => ready(g)));
    c.nginx = await Nginx.start(c.ports);
    c.front = Object.create(Gateway.prototype);
    c.front.url = c.nginx.url;
    return c;
  }

  /// A rolling restart's step for instance `i`, as an operator does it with a plain nginx (which
  /// has no active health checks): out of rotation, SIGTERM (the gateway drains), start again on
  /// the same port, back in rotation. `kill` = SIGKILL instead, without leaving the rotation.
  async restart(i, { kill = false } = {}) {
    const g = this.gateways[i];
    if (kill) g.kill();
    else await this.nginx.setDown(this.ports[i], true);
    await g.stop();
    this.gateways[i] = await Gateway.start(this.config, { port: this.ports[i] });
    await ready(this.gateways[i]);
    if (!kill) await this.nginx.setDown(this.ports[i], false);
    return this.gateways[i];
  }

  logs() {
    return [...this.gateways.map((g, i) => `=== instance ${i} ===\n${g.logs()}`), this.nginx?.logs() ?? ''].join('\n');
  }

  async stop() {
    await this.nginx?.stop();
    await Promise.all(this.gateways.map((g) => g.stop().catch(() => {})));
  }
}

export { sleep };
