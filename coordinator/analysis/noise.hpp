// Base-rate arithmetic for the planner's evidence rules (evidence_noise.cpp): how much repetition a
// suspicion needs when noise, measured on the campaign's own readings, could have produced it, and
// how far above its base rate a count must be to be no noise. Pure functions, unit-tested alone.
#pragma once

namespace kiln::analysis::noise {

// Family-wise error rate the repetition rules aim at: one false link or node in about 100 campaigns.
constexpr double kAlpha = 0.01;

// Readings in a row (none fast in between) that noise repeats, for each of `tests` suspicions, with
// probability at most alpha overall, when one noisy reading repeats with probability q; never fewer
// than floor. q outside (0, 1) or no tests: floor.
int repeats_needed(double q, double tests, int floor, double alpha = kAlpha);

// As repeats_needed, for a rule that forgives one fast reading once `guard` slow ones came before
// it: noise then confirms with q^k (1 + (k - guard)(1 - q)), the fast reading being any one of the
// k - guard gaps after the guard-th slow reading.
int repeats_needed_one_miss(double q, double tests, int floor, int guard, double alpha = kAlpha);

// Votes (slow results) that a suspicion must gather, never fewer than floor, so that noise gives any
// of `tests` suspicions that many with probability at most alpha overall, when a noisy test is slow
// with probability p. The rules confirm on k votes that outnumber the fast results, so k votes can
// come from as many as 2k-1 tests: the chance per suspicion is P(Binomial(2k-1, p) >= k), not p^k.
// More suspicions (a larger cluster screens more nodes) ask more votes. p unknown (<= 0) or nothing
// to judge: floor; p >= 0.5 (half the pair tests slow, as under congestion): 64, no vote will do.
int votes_needed(double p, double tests, int floor, double alpha = kAlpha);

// P(X >= k) for X ~ Binomial(trials, p).
double binomial_tail(int k, int trials, double p);

// P(X >= k) for X ~ Poisson(mean).
double poisson_tail(int k, double mean);

// A count far beyond what its base rate predicts: at least min_trials trials, kHotRatio times the
// expected count, kHotSigmas sigma of a Poisson count above it, and a Poisson tail below alpha / tests
// (a test per node of the campaign). Per-node counts spread wider than Poisson (a rank's jitter is
// shared by its edges of one group): at twice and five sigma a healthy node of 256 read 16 slow peers
// where 4 were expected, so the rule asks four times and eight sigma (a 1.1x node reads 10-20x).
constexpr double kHotRatio = 4.0;
constexpr double kHotSigmas = 8.0;
bool hot(int count, int trials, double rate, double tests, int min_trials = 30, double alpha = kAlpha);

}  // namespace kiln::analysis::noise
