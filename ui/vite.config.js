// Vite build of the admin UI (docs/ui.md). The gateway serves the output at /ui (embedded by
// cmake/ui_embed.cmake); the build writes it into the CMake build directory (--outDir).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  // Preact's automatic JSX runtime (no @preact/preset-vite needed for a production build).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    target: 'es2020',
    sourcemap: false,
    // Every asset a file of its own: nothing inlined as data: URLs into scripts or styles.
    assetsInlineLimit: 0,
    // The polyfill is only needed by old browsers and would be an inline-looking helper: off.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 300,
  },
  server: {
    // `npm run dev` against a gateway on :4000 (the dev server proxies the data calls).
    proxy: Object.fromEntries(['/key', '/team', '/user', '/organization', '/customer', '/tag', '/budget',
      '/spend', '/global', '/model', '/tollgate', '/v1', '/metrics'].map((p) => [p, 'http://127.0.0.1:4000'])),
  },
});
