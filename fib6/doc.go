// Package fib6 owns the IPv6 routing tables: tables by id, the routes in
// them with Linux's semantics (add, replace, append, delete, get, dump,
// flush; metrics, types, source-specific routes), and the lock-free trie
// that answers longest-prefix-match lookups.
//
// fib6 never blocks a reader: a lookup loads atomic pointers to immutable
// nodes and allocates nothing. Each table has its own writer lock; a writer
// validates and allocates, copies only the nodes it changes (once per
// transaction), and publishes with one atomic store. There is no lock
// shared by tables. DESIGN.md beside this file explains the trie.
package fib6
