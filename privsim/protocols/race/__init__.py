"""Private, mergeable RACE sketches for kernel sums (Coleman & Shrivastava, CCS 2021)."""
