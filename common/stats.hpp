// Robust statistics used for outlier decisions: medians and MADs resist the one bad node that we
// are looking for, where means and standard deviations would be dragged towards it.
#pragma once

#include <span>
#include <vector>

namespace kiln::stats {

// All functions but median_in_place take their input by value or span and never modify the
// caller's data. They throw std::invalid_argument on an empty input.
double median(std::span<const double> xs);
// The same median, reordering v instead of copying it: for hot loops that own a scratch vector.
double median_in_place(std::vector<double>& v);
double mean(std::span<const double> xs);
// Median absolute deviation from the median (unscaled).
double mad(std::span<const double> xs);
// MAD scaled by 1.4826 so it estimates the standard deviation for normal data.
double mad_sigma(std::span<const double> xs);
// Percentile p in [0, 100] with linear interpolation between closest ranks.
double percentile(std::span<const double> xs, double p);
double min(std::span<const double> xs);
double max(std::span<const double> xs);
// Robust z-score of x against a sample: (x - median) / mad_sigma. When the MAD is zero (ties),
// falls back to a relative scale so that identical peers do not make every deviation infinite.
double robust_z(double x, std::span<const double> sample, double min_rel_scale = 1e-3);

}  // namespace kiln::stats
