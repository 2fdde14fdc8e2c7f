// Contrast: a histogram of the images on screen, and a window from its percentiles.
export const HISTOGRAM_BINS = 256;

// -> {min, max, counts: Uint32Array(bins)} over the finite values of all arrays.
export function histogram(arrays, bins = HISTOGRAM_BINS, range = null) {
  let min = Infinity;
  let max = -Infinity;
  if (range) {
    [min, max] = range;
  } else {
    for (const values of arrays) {
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (v < min) min = v;
        if (v > max) max = v;
      }
    }
  }
  const counts = new Uint32Array(bins);
  if (!(max > min)) return { min: Number.isFinite(min) ? min : 0, max: Number.isFinite(max) ? max : 1, counts };
  const scale = bins / (max - min);
  for (const values of arrays) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (!(v >= min && v <= max)) continue;
      counts[Math.min(bins - 1, Math.floor((v - min) * scale))]++;
    }
  }
  return { min, max, counts };
}

// The window [low, high] between the `lowFraction` and `highFraction` percentiles.
export function percentileWindow(hist, lowFraction = 0.005, highFraction = 0.995) {
  const total = hist.counts.reduce((a, b) => a + b, 0);
  if (total === 0) return [hist.min, hist.max];
  const width = (hist.max - hist.min) / hist.counts.length;
  let seen = 0;
  let low = hist.min;
  let high = hist.max;
  let lowFound = false;
  for (let b = 0; b < hist.counts.length; b++) {
    seen += hist.counts[b];
    if (!lowFound && seen >= lowFraction * total) {
      low = hist.min + b * width;
      lowFound = true;
    }
    if (seen >= highFraction * total) {
      high = hist.min + (b + 1) * width;
      break;
    }
  }
  return high > low ? [low, high] : [hist.min, hist.max];
}
