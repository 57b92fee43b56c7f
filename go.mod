module urouter

go 1.26.0

require github.com/gaissmai/bart v0.30.0

require golang.org/x/sys v0.50.0 // indirect
