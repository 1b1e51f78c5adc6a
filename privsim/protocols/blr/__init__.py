"""DP Bayesian linear regression by sufficient statistic perturbation (Heikkilä et al. 2017, §3.2)."""
