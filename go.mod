module github.com/stratacfg/strata

go 1.26.0
