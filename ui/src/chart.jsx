// A time-series chart (uPlot): spend per bucket, with requests and errors on a second axis.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/// `series` = [{t (ISO), spend, requests, errors}], oldest first.
export function SpendChart({ series, height = 220 }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    if (!el.current) return undefined;
    const xs = series.map((p) => Math.floor(new Date(p.t).getTime() / 1000));
    const data = [xs, series.map((p) => Number(p.spend) || 0), series.map((p) => p.requests ?? 0), series.map((p) => p.errors ?? 0)];
    const width = Math.max(320, el.current.clientWidth || 640);
    const opts = {
      width, height,
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, usd: { auto: true }, n: { auto: true } },
      axes: [
        {},
        { scale: 'usd', values: (_, ticks) => ticks.map((v) => `$${v < 0.01 && v > 0 ? v.toExponential(1) : v.toFixed(2)}`), size: 70 },
        { scale: 'n', side: 1, grid: { show: false } },
      ],
      series: [
        {},
        { label: 'spend ($)', scale: 'usd', stroke: '#1f4e79', fill: 'rgba(31,78,121,0.12)', width: 2, value: (_, v) => (v == null ? '—' : `$${v.toFixed(6)}`) },
        { label: 'requests', scale: 'n', stroke: '#5b8c3a', width: 1.5 },
        { label: 'errors', scale: 'n', stroke: '#b3261e', width: 1.5 },
      ],
    };
    plot.current?.destroy();
    plot.current = new uPlot(opts, data, el.current);
    const onResize = () => plot.current?.setSize({ width: Math.max(320, el.current?.clientWidth || 640), height });
    window.addEventListener('resize', onResize);
    return () => { window.removeEventListener('resize', onResize); plot.current?.destroy(); plot.current = null; };
  }, [series, height]);
  return <div class="chart" ref={el} data-testid="spend-chart" />;
}
