import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

export default defineConfig({
  plugins: [preact()],
  base: '/',
  build: { assetsInlineLimit: 0, chunkSizeWarningLimit: 1024 },
});
