"""Housing units and their SF1 block tables (Generate-then-Verify): schema, tables,
synthetic blocks, tabulation."""
