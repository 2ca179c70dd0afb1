import t from 'tap';
import { checkTarget } from '../src/http/router.js';

t.equal(checkTarget('/api/v2/x?y'), '/api/v2/x');
