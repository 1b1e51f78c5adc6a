"""DP block coordinate descent on vertically partitioned data (de Jong et al. 2022)."""
