backup table t1 to 'data.txt';
BACKUP;
restore table t1 from 'data.txt';
show table types;
SHOW TABLE;
show mutex status;
