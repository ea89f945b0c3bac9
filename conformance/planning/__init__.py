"""Planning a matrix: from a matrix file (fixtures/matrices/) to the cells of a plan, in shards."""
