module flowgate.local/bench/loadgen

go 1.21
