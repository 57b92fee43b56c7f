module urouter

go 1.26.0

require github.com/gaissmai/bart v0.30.0
