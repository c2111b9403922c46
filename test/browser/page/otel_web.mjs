// The page side of cors.test.mjs, bundled by esbuild for the browser: the
// OpenTelemetry web SDK and its OTLP/HTTP exporter, as a browser app uses
// them. window.sendSpans() records each export's result as the app's own
// exporter sees it.

import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { WebTracerProvider } from '@opentelemetry/sdk-trace-web';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';

/** Ends `count` root spans of `service` and flushes them to `url`; resolves the exports' results. */
window.sendSpans = async ({ url, token, service, count, timeoutMillis = 3000 }) => {
  const results = [];
  const exporter = new OTLPTraceExporter({ url, headers: { Authorization: `Bearer ${token}` }, timeoutMillis });
  const recording = {
    export(spans, done) {
      exporter.export(spans, (result) => {
        const error = result.error;
        results.push({
          code: result.code, // 0 SUCCESS, 1 FAILED
          error: error ? `${error.message}${error.cause ? ` (cause: ${error.cause})` : ''}` : null,
        });
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
  };
  const provider = new WebTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [
      new BatchSpanProcessor(recording, { maxExportBatchSize: 512, scheduledDelayMillis: 60_000 }),
    ],
  });
  const tracer = provider.getTracer('cors-test');
  for (let i = 0; i < count; i++) {
    const span = tracer.startSpan(`browser span ${i}`);
    span.setAttribute('browser.index', i);
    span.end();
  }
  // A failed export rejects the flush with its errors; `results` has them.
  await provider.forceFlush().catch(() => {});
  await provider.shutdown().catch(() => {});
  return results;
};
