"""Members of the group: member specs and launching any harness from one."""
