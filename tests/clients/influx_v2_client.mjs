// Writes three points to gpulse through the official InfluxDB 2.x JavaScript
// client (@influxdata/influxdb-client), as a Node service would: tags and
// integer, float, string and boolean fields, nanosecond precision.
//
// Usage: node influx_v2_client.mjs URL      (e.g. http://127.0.0.1:8086)
// Exits 0 when every point was acknowledged, 1 on any error (no retries).
import {InfluxDB, Point} from '@influxdata/influxdb-client';

const url = process.argv[2];
if (!url) {
  console.error('usage: node influx_v2_client.mjs URL');
  process.exit(2);
}

const influx = new InfluxDB({url, token: 'gpulse-test-token', timeout: 10000});
const writeApi = influx.getWriteApi('gpu-org', 'fleet', 'ns', {
  maxRetries: 0,      // an error must fail the test, not be retried away
  flushInterval: 0,   // only explicit flushes
  batchSize: 1000,
});
writeApi.useDefaultTags({cluster: 'kops'});

const t0 = 1704067200000000000n;  // 2024-01-01T00:00:00Z
const points = [
  new Point('gpu').tag('node', 'n1').tag('gpu', '0')
      .intField('util', 93).floatField('power_w', 612.5)
      .stringField('job', 'train "7", step=1').booleanField('throttled', false)
      .timestamp(String(t0)),
  new Point('gpu').tag('node', 'n1').tag('gpu', '1')
      .intField('util', 88).floatField('power_w', 598.25)
      .stringField('job', 'train-7').booleanField('throttled', true)
      .timestamp(String(t0)),
  new Point('gpu').tag('node', 'n 2').tag('gpu', '0')
      .intField('util', 0).floatField('power_w', 61.0)
      .stringField('job', '').booleanField('throttled', false)
      .timestamp(String(t0 + 60000000000n)),
];

try {
  writeApi.writePoints(points);
  await writeApi.flush();
  await writeApi.close();
  console.log(`influx_v2_client: wrote ${points.length} points to ${url}`);
  process.exit(0);
} catch (e) {
  console.error(`influx_v2_client: write failed: ${e}`);
  process.exit(1);
}
