import { describe, it, expect } from 'vitest';
import { fmt3, fmtSigned3, fmtOffset, svgDataUrl } from '../src/format';

describe('format', () => {
  it('rounds to three decimals for display only', () => {
    expect(fmt3(0.1234567)).toBe('0.123');
    expect(fmt3(1)).toBe('1.000');
    expect(fmt3(null)).toBe('—');
    expect(fmtSigned3(-0.3)).toBe('−0.300');
    expect(fmtSigned3(0.0005)).toBe('+0.001');
    expect(fmtSigned3(0)).toBe('±0.000');
  });

  it('offset label', () => {
    expect(fmtOffset(0)).toBe('now');
    expect(fmtOffset(-30)).toBe('now − 30 d');
    expect(fmtOffset(365)).toBe('now + 365 d');
  });

  it('encodes SVG (with non-ASCII labels) as a base64 data URL that decodes back exactly', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>Gedächtnis — 記憶 <script>x</script></text></svg>';
    const url = svgDataUrl(svg);
    expect(url.startsWith('data:image/svg+xml;base64,')).toBe(true);
    const bytes = Uint8Array.from(atob(url.split(',')[1]), (c) => c.charCodeAt(0));
    expect(new TextDecoder().decode(bytes)).toBe(svg);
  });

  it('handles large SVGs without blowing the stack', () => {
    const svg = `<svg>${'<rect/>'.repeat(100_000)}</svg>`;
    expect(svgDataUrl(svg).length).toBeGreaterThan(svg.length);
  });
});
